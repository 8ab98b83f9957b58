; calls: f(), obj.f()
(call_expression (simple_identifier) @call)
(call_expression (navigation_expression target: (_) @call.object suffix: (navigation_suffix suffix: (simple_identifier) @call.attr)))
; imports
(import_declaration (identifier) @import)
; inheritance and conformance
(inheritance_specifier inherits_from: (user_type (type_identifier) @inherit))
(user_type (type_identifier) @ref)
