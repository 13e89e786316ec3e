"""Binding and validating statements: bound values become typed terms, restrictions and slices,
and modifications become mutations. Pure: no storage, no network, no clock of its own."""
