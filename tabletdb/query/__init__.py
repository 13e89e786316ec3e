"""The request processor (the protocol's `Handler`): statements are parsed, checked for
permission and routed: DDL becomes group0 commands, DML and SELECT go to the data path,
DESCRIBE and auth statements are answered here."""
