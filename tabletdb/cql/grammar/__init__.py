"""The CQL grammar (`cql.lark`) and the callbacks that turn its parse into AST nodes, by statement
family; `tabletdb.cql.parser` is the entry point that builds the parser from them."""
