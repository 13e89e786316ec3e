"""Binding and validating statements: bound values become typed terms, restrictions and slices,
and modifications become mutations. Pure: no storage, no network, no clock of its own.

A request's values are turned into typed values here and nowhere else: the processor hands them
to ``BoundSelect`` or ``BoundModification``, and the layers above execute those objects, asking
them for restrictions, keys, conditions, limits and mutations, never for the values' bytes."""
