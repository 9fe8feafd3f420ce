"""The ground floor: plain data types, input checks, option declarations, text utilities,
credential redaction and the embedded models' paths. Imports nothing else of ``shared``."""
