"""Model formats the project trains and logs: a code classifier around a Hugging Face
encoder, a locally trained tokenizer, and an MLflow ``PythonModel`` that returns class
probabilities. Heavy imports (torch, transformers) happen inside the submodules."""
