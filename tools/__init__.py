"""Developer tools the Makefile runs; not part of the installed package."""
