complete --keep-order --exclusive --command ark --arguments "(COMPLETE=fish ark -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
