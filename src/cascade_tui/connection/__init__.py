"""The UI's and the script commands' way to a server: the async API client (`client`, its failure
kinds in `client_errors`), the settings it connects with (`config`), the local server `cascade
up` leaves behind (`local_server`, `serve_log`) and the ports it picks (`ports`). No Textual."""
