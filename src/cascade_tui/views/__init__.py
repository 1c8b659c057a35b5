"""The view-models: what the screens and the script commands show, as plain data and text (the
run-state reducer, the sims table's cells, the kernels and step charts as styled lines, the
comparison and sweep maths, the CLI's tables). Pure: no Textual, no I/O, tested directly. Nothing
here imports the screens, the connection or the script commands."""
