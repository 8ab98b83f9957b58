; calls: F(), obj.F(), new T()
(invocation_expression function: (identifier) @call)
(invocation_expression function: (member_access_expression expression: (_) @call.object name: (identifier) @call.attr))
(object_creation_expression type: (identifier) @call)
; imports: using A.B;
(using_directive [(identifier) (qualified_name)] @import)
; inheritance
(base_list [(identifier) (qualified_name)] @inherit)
(base_list (generic_name (identifier) @inherit))
