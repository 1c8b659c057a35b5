"""The client side: the terminal UI (`app`, `screens/`, `panes/`, `widgets/`), the script
commands (`scripting/`) and the umbrella `cascade` command (`cli`). It imports only the server's
shared room; importing this package or `cli` loads no Textual."""
