"""The options of both front ends: one `Option` class (`option`), the table of every option
(`table`), the resolved values and how they are read (`resolved`), and `allow` patterns."""
