"""The docs site's scripts: the generated reference pages (`python -m docs.gen_reference`) and the
terminal UI guide's screenshots (`python -m docs.screenshots`). The pages are the Markdown files."""
