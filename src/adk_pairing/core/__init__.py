"""The core, above the ledger and the rules: placeholders, repair, what is remembered, owners."""
