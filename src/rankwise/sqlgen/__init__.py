"""SQL generation: the shipped sql/ files rendered for any dialect, input checks as SQL, beyond-accuracy scripts."""
