"""The kit every device runtime shares: launch checks and rules, device arrays, lazy realization,
buffer pools, host aliasing, the launch stream. Imports no code generator."""
