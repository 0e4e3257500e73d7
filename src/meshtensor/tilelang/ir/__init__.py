"""The typed model every mesh pass shares: comm-op records, the launch, the expression
evaluator, statements with their scope, per-buffer metadata, the kernel resolver."""
