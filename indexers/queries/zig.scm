; imports: const std = @import("std");
((builtin_function (builtin_identifier) @_import (arguments (string (string_content) @import)))
 (#eq? @_import "@import"))
; calls: f(x), a.b.f(x)
(call_expression function: (identifier) @call)
(call_expression function: (field_expression object: (_) @call.object member: (identifier) @call.attr))
; types named in declarations
(variable_declaration type: (identifier) @ref)
(parameter type: (identifier) @ref)
