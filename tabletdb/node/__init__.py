"""One server process: configuration, identity and the wiring of every service, and its
lifecycle; the group0 shell and the admin surface live in sub-packages."""
