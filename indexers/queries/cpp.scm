(call_expression function: (identifier) @call)
(call_expression function: (field_expression field: (field_identifier) @call.attr))
(preproc_include path: (_) @import)
