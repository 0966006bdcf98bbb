"""`propdata serve`'s server: uvicorn with our HTTP protocol (protocol.py), which holds each
client to its limits (limits.py) and spreads connections over the workers (spread.py);
server.py binds the socket and runs the workers."""
