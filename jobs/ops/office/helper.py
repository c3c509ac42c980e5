# filemill's LibreOffice helper: starts one headless LibreOffice on its own profile,
# connects to it over UNO once, and then converts documents on request, one JSON line
# in (stdin), one JSON line out (stdout). The Go side owns the process group: it kills
# this helper and its LibreOffice together on a timeout, a crash or shutdown.
#
# Requests:  {"op": "ping"}
#            {"op": "convert", "in": PATH, "out": PATH, "import": FILTER, "to": "pdf"|"txt"|"html"|"xlsx"|"pptx"}
# Answers:   {"ok": true, ...} or {"ok": false, "error": KIND, "detail": TEXT}
# KIND is encrypted, corrupted, unsupported or broken (the helper exits after broken).

import json
import os
import subprocess
import sys
import time

import uno
import unohelper
from com.sun.star.beans import PropertyValue
from com.sun.star.task import XInteractionHandler
from com.sun.star.connection import NoConnectException
from com.sun.star.lang import DisposedException

ABORT = uno.getTypeByName("com.sun.star.task.XInteractionAbort")
APPROVE = uno.getTypeByName("com.sun.star.task.XInteractionApprove")
DISAPPROVE = uno.getTypeByName("com.sun.star.task.XInteractionDisapprove")
PASSWORD = uno.getTypeByName("com.sun.star.task.XInteractionPassword")

# The export filter per document kind and target.
EXPORT = {
    ("text", "pdf"): "writer_pdf_Export",
    ("web", "pdf"): "writer_web_pdf_Export",
    ("spreadsheet", "pdf"): "calc_pdf_Export",
    ("presentation", "pdf"): "impress_pdf_Export",
    ("drawing", "pdf"): "draw_pdf_Export",
    ("text", "txt"): "Text (encoded)",
    ("web", "txt"): "Text (encoded)",
    ("text", "html"): "HTML (StarWriter)",
    ("web", "html"): "HTML",
    ("spreadsheet", "html"): "HTML (StarCalc)",
    ("spreadsheet", "xlsx"): "Calc MS Excel 2007 XML",
    ("presentation", "pptx"): "Impress MS PowerPoint 2007 XML",
}


def prop(name, value):
    p = PropertyValue()
    p.Name = name
    p.Value = value
    return p


class Handler(unohelper.Base, XInteractionHandler):
    """Answers every question LibreOffice would ask a person with 'no', noting
    password requests: a document that needs one is reported as encrypted."""

    def __init__(self):
        self.password = False
        self.questions = []

    def handle(self, request):
        # The request itself is not read: PyUNO of Python 3.11 fails to convert UNO
        # exceptions (getRequest raises). A password request is known by its offer
        # to take a password.
        conts = request.getContinuations()
        if any(c.queryInterface(PASSWORD) is not None for c in conts):
            self.password = True
        self.questions.append("password" if self.password else "other")
        for want in (ABORT, DISAPPROVE):
            for c in conts:
                if c.queryInterface(want) is not None:
                    c.select()
                    return


def kind_of(doc):
    if doc.supportsService("com.sun.star.text.WebDocument"):
        return "web"
    if doc.supportsService("com.sun.star.text.GenericTextDocument"):
        return "text"
    if doc.supportsService("com.sun.star.sheet.SpreadsheetDocument"):
        return "spreadsheet"
    if doc.supportsService("com.sun.star.presentation.PresentationDocument"):
        return "presentation"
    if doc.supportsService("com.sun.star.drawing.DrawingDocument"):
        return "drawing"
    return "other"


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Office:
    def __init__(self, soffice, profile, pipe, timeout):
        # LibreOffice writes to stdout at times: keep it off the protocol channel.
        self.proc = subprocess.Popen(
            [
                soffice,
                "--headless", "--invisible", "--nologo", "--norestore", "--nodefault",
                "--nolockcheck", "--nofirststartwizard",
                "-env:UserInstallation=" + uno.systemPathToFileUrl(profile),
                "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe,
            ],
            stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr,
        )
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext(
            "com.sun.star.bridge.UnoUrlResolver", local)
        url = "uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("LibreOffice exited with %s during start" % self.proc.returncode)
            try:
                ctx = resolver.resolve(url)
                break
            except NoConnectException:
                if time.monotonic() > deadline:
                    raise RuntimeError("LibreOffice did not accept a connection in time")
                time.sleep(0.05)
        smgr = ctx.ServiceManager
        self.desktop = smgr.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)

    def ping(self):
        # A round trip through the office process, not only the bridge.
        self.desktop.getComponents()
        return {"ok": True}

    def convert(self, req):
        handler = Handler()
        props = [
            prop("Hidden", True),
            prop("ReadOnly", True),
            # Never run macros; never update links to other files or the network.
            prop("MacroExecutionMode", 0),  # css.document.MacroExecMode.NEVER_EXECUTE
            prop("UpdateDocMode", 0),  # css.document.UpdateDocMode.NO_UPDATE
            prop("InteractionHandler", handler),
        ]
        if req.get("import"):
            props.append(prop("FilterName", req["import"]))
        if req.get("import_options"):
            props.append(prop("FilterOptions", req["import_options"]))
        try:
            doc = self.desktop.loadComponentFromURL(
                uno.systemPathToFileUrl(req["in"]), "_blank", 0, tuple(props))
        except DisposedException:
            raise
        except Exception as e:  # IllegalArgumentException, IOException: the document
            self.ping()  # or the office itself died: that raises, and we are broken
            if handler.password:
                return {"ok": False, "error": "encrypted", "detail": "password required"}
            return {"ok": False, "error": "corrupted", "detail": "%s: %s" % (type(e).__name__, e)}
        if doc is None:
            self.ping()
            if handler.password:
                return {"ok": False, "error": "encrypted", "detail": "password required"}
            return {"ok": False, "error": "corrupted",
                    "detail": "load returned nothing; asked: %s" % ",".join(handler.questions)}
        try:
            kind = kind_of(doc)
            flt = EXPORT.get((kind, req["to"]))
            if flt is None:
                return {"ok": False, "error": "unsupported",
                        "detail": "no %s export for a %s document" % (req["to"], kind)}
            out = [prop("FilterName", flt), prop("Overwrite", True)]
            if flt == "Text (encoded)":
                out.append(prop("FilterOptions", "UTF8,LF,,,"))
            doc.storeToURL(uno.systemPathToFileUrl(req["out"]), tuple(out))
            return {"ok": True, "kind": kind}
        finally:
            try:
                doc.close(True)
            except Exception:
                try:
                    doc.dispose()
                except Exception:
                    pass


def main():
    soffice, profile, pipe, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    office = Office(soffice, profile, pipe, timeout)
    answer({"ok": True, "ready": True, "office_pid": office.proc.pid})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            if req.get("op") == "ping":
                answer(office.ping())
            elif req.get("op") == "convert":
                answer(office.convert(req))
            else:
                answer({"ok": False, "error": "unsupported", "detail": "unknown op"})
        except Exception as e:
            # The bridge or the office died: say so and leave; the Go side restarts us.
            answer({"ok": False, "error": "broken", "detail": "%s: %s" % (type(e).__name__, e)})
            sys.exit(3)
    # Standard input closed: a clean shutdown.
    try:
        office.desktop.terminate()
    except Exception:
        pass
    office.proc.kill()


if __name__ == "__main__":
    main()
