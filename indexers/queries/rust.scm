(call_expression function: (identifier) @call)
(call_expression function: (field_expression value: (_) @call.object field: (field_identifier) @call.attr))
(call_expression function: (scoped_identifier name: (identifier) @call.attr))
(use_declaration argument: (_) @import)
(impl_item trait: (type_identifier) @inherit)
(type_identifier) @ref
