"""`showdown doctor`: may this table, the central server or the desk workstation open?"""
