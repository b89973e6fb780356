"""The Linux 6.12 source the models are checked against: Debian's ``linux-source-6.12`` fetched
through a private apt configuration (``debian``) and unpacked once, the index of its function names
(``index``) and the committed excerpts the player's code pane shows (``excerpts``).  Views may read
this package; it reads nothing of the guests or the log replay."""
