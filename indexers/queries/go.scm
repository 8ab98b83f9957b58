(call_expression function: (identifier) @call)
(call_expression function: (selector_expression operand: (_) @call.object field: (field_identifier) @call.attr))
(import_spec path: (interpreted_string_literal) @import)
(type_identifier) @ref
