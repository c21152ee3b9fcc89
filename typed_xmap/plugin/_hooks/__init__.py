"""The plugin's hooks by family: each module types one family of calls or annotations."""
