"""The run screen's lower panes, each a widget that owns its state: the selected sim's log, the
kernels comparison and the run's files."""
