"""Front ends: what turns a user's model into the model language (``docs/model-format.md``)."""
