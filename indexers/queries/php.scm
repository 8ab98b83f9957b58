; calls: f(), $obj->f(), Cls::f(), new Cls()
(function_call_expression function: (name) @call)
(function_call_expression function: (qualified_name) @call)
(member_call_expression object: (_) @call.object name: (name) @call.attr)
(scoped_call_expression scope: (_) @call.object name: (name) @call.attr)
(object_creation_expression [(name) (qualified_name)] @call)
; imports: use A\B\C;
(namespace_use_clause [(name) (qualified_name)] @import)
; inheritance
(base_clause [(name) (qualified_name)] @inherit)
(class_interface_clause [(name) (qualified_name)] @inherit)
(named_type [(name) (qualified_name)] @ref)
