"""The web console on the HTTP port: the ask page (/), the admin page (/admin), GraphiQL, and their headers.

Every asset ships in this package (``static/`` is ours, ``vendor/`` is GraphiQL's, with its licences): a
browser on an air-gapped network loads nothing from elsewhere. The pages call the GraphQL API with the
bearer header only; the one cookie (HttpOnly, Secure, SameSite=Strict) decides who gets the admin page.
"""
