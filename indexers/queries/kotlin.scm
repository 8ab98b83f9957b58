; calls: f(x), obj.f(x), Type(x)
(call_expression . (identifier) @call)
(call_expression . (navigation_expression . (_) @call.object . (identifier) @call.attr))
; imports
(import (qualified_identifier) @import)
; inheritance: `: Base(), Iface`
(delegation_specifier (constructor_invocation (user_type (identifier) @inherit)))
(delegation_specifier (user_type (identifier) @inherit))
(user_type (identifier) @ref)
