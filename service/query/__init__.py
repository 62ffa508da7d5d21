"""The query engine: a query's path from validation to the answer."""
