"""The PIMSAB compiler: tensor-expression DSL, distribution search, CRAM allocation, code generation."""
