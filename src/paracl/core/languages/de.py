"""German: a pivot of the round trip (facebook/wmt19-en-de), not a corpus language."""

from paracl.core.languages import Pivot, register

PIVOT = Pivot(
    code="de",
    name="German",
    examples=(
        "Die Kirche wurde im 12. Jahrhundert erbaut und 1890 restauriert.",
        "Sie studierte Physik an der Universität Wien.",
        "Das Album wurde 1998 von einem kleinen Label veröffentlicht.",
    ),
)
register(PIVOT)
