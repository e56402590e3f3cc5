"""The parties' own cryptography: keyed encodings (PRFs), cuckoo placement, sealing of messages
and attachments, and the encryption worker process.  The comparison arithmetic itself is the
scheme's (:mod:`common.schemes`)."""
