"""The REST resources' JSON shapes (pydantic), and how each is built from engine objects.

Names are Redis's words; times are ``*_ms`` integers; IDs are strings in ``ms-seq`` form.
"""
