"""The core beside the ledger: placeholders, the repair of a history, what is remembered, owners."""
