# output tests (rewritten for the rank launcher; see below)
