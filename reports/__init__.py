"""Reports: PDFs a compliance officer can sign, built from the warehouse's ``marts``.

A report is one ``ReportDefinition`` (``reports.definition``: its parameters, the queries it
reads, how their results become the template's context) plus one Jinja2 template in
``reports/templates/``. ``reports.generate.generate_report`` runs the queries against the
published read-only copy, renders the HTML, and has WeasyPrint lay it out in a separate,
limited process (``reports.render``) as PDF/A-3b with the evidence attached.
"""
