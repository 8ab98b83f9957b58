; calls: f(x), obj.f(x), new C(x)
(call_expression function: (identifier) @call)
(call_expression function: (field_expression value: (_) @call.object field: (identifier) @call.attr))
(instance_expression (type_identifier) @call)
; imports
(import_declaration) @import
; inheritance
(extends_clause (type_identifier) @inherit)
(type_identifier) @ref
