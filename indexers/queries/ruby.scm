; calls: f(x), obj.f, Mod::f
(call receiver: (_) @call.object method: (identifier) @call.attr)
(call !receiver method: (identifier) @call)
; imports: require 'x', require_relative 'x'
((call !receiver method: (identifier) @_require arguments: (argument_list (string (string_content) @import)))
 (#match? @_require "^(require|require_relative|load|autoload)$"))
; inheritance and mixins
(superclass [(constant) (scope_resolution)] @inherit)
((call !receiver method: (identifier) @_mixin arguments: (argument_list [(constant) (scope_resolution)] @inherit))
 (#match? @_mixin "^(include|extend|prepend)$"))
(constant) @ref
