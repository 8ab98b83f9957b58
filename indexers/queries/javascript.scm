(class_heritage (identifier) @inherit)
