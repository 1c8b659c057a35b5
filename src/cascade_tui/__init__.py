"""The client side: the terminal UI (`app`, `screens/`, `panes/`, `widgets/`), its view-models
(`views/`), its way to a server (`connection/`), the script commands (`scripting/`) and the
umbrella `cascade` command (`cli`). It imports only the core (`cascade_core`), never the server
or the worker; importing this package or `cli` loads no Textual."""
