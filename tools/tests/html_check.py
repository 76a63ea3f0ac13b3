#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
# Read an HTML report on stdin with Python's HTML parser; print what a
# browser would find: the flame graph's frames ("frame TITLE WIDTH"), the
# timeline's bars ("stall TITLE"), and every reference to anything outside
# the page ("external ATTR=VALUE": there must be none).
import sys
from html.parser import HTMLParser


class Report(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = None
        self.stack = []
        self.in_title = False
        self.title = ""
        self.width = None
        self.out = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k, v in attrs:
            if k in ("src", "href", "xlink:href") or (v and "url(" in v):
                self.out.append("external %s=%s" % (k, v))
        if tag in ("link", "iframe", "img", "object", "embed"):
            self.out.append("external <%s>" % tag)
        if tag == "svg":
            self.svg = a.get("id")
            self.out.append("svg %s" % self.svg)
        if tag == "title" and self.svg:
            self.in_title = True
            self.title = ""
        if tag == "rect" and self.svg == "flamegraph":
            self.width = a.get("width")
            self.out.append("frame %s %s" % (self.title, self.width))
        if tag == "rect" and self.svg == "timeline":
            self.stall = True

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
            if self.svg == "timeline":
                self.out.append("stall %s" % self.title)
        if tag == "svg":
            self.svg = None

    def handle_data(self, data):
        if self.in_title:
            self.title += data


p = Report()
p.feed(sys.stdin.read())
p.close()
print("\n".join(p.out))
