"""The scripting commands: `cascade runs`, `cascade run ...`, `cascade results`, `cascade traces`.

They talk to the server through the UI's async client (`cascade_tui.client`) and read the same
settings as `cascade tui` (flags, CASCADE_URL / CASCADE_TOKEN, the config file), but never import
Textual. `output` and `views` are pure: what a command prints is built and tested without a server.
"""
