"""The HTTP server ``xstreams serve`` runs: uvicorn, with what it needs besides.

    server       Server: uvicorn's, ending event streams before shutdown and serving its
                 sockets through accept's FairServer
    accept       FairServer: every waiting connection accepted at once, on uvloop too
    connections  HttpProtocol: header, body and keep-alive deadlines, a cap on connections
    workers      several worker processes on one listening socket, and their supervisor
    addresses    the URLs the start-up log prints

The command line (app/cli) builds the settings and calls ``run``-style entry points here;
nothing here imports the command line.
"""
