"""transformers' classes imported by one thread at a time.

transformers loads its classes on first use through a lazy module that is not safe for threads: two
threads that ask it for different names at once (the warm-up loading a demo model while a validator
loads its tokenizer, or two first requests) get "cannot import name 'AutoModel' from 'transformers'"
(three threads failed so every time here). So every import from transformers in the app runs under
:data:`LOCK`, reentrant for an import that leads to another.
"""

import threading

LOCK = threading.RLock()
