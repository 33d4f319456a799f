"""Server-Sent Events: stream tails and group delivery under the REST resources."""
