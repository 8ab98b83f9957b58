(extends_clause value: (identifier) @inherit)
(implements_clause (type_identifier) @inherit)
(type_annotation (type_identifier) @ref)
