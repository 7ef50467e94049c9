"""Function invocation effects: ``custom`` Python callables, ``rest`` (OpenAPI and xFlow inline
paths), ``graphql``, and function auth. See specs/functions.md."""

from xflow_runtime.functions.context import FunctionContext, HttpSettings
from xflow_runtime.functions.invoke import invoke_function
from xflow_runtime.functions.registry import FunctionRegistry

__all__ = ["FunctionContext", "FunctionRegistry", "HttpSettings", "invoke_function"]
