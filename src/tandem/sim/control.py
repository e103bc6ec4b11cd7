"""The simulator's own endpoints: `GET /v1/models`, and the `/_sim/` control API for tests.

GET    /v1/models       the simulated model (`sim-PROFILE`)
POST   /_sim/faults     {"kind": "429", "count": 2} arms a fault (no count: every request)
DELETE /_sim/faults     clears armed faults
GET    /_sim/stats      counters: requests per endpoint, faults fired, the last request's shape
POST   /_sim/reset      zeroes the counters, forgets edit draws, attempts and logged requests (armed faults
                        and truth stay)
POST   /_sim/edit-truth {"files": {"path": "text after the edit"}, "errors": "calibrated", "error_scale": 1.0}
                        replaces the edit truth (see tandem.sim.edits.EditTruth; {"files": {}} clears it)
GET    /_sim/edits      what was drawn for each edit request since the last reset (all simulated)
POST   /_sim/next-edit-truth {"files": {"path": "text after the next changes"}} replaces the next-edit truth
                        (see tandem.sim.next_edit)
GET    /_sim/requests   every generation request's body since the last reset, oldest first
                        ({"requests": [{"endpoint": "chat.completions", "body": "..."}]})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

from tandem.sim import openai_common as oc
from tandem.sim.edits import EditTruth
from tandem.sim.settings import FaultSpec, SimConfigError, parse_fault

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from tandem.sim.state import SimState


async def list_models(request: Request, sim: SimState) -> Response:
    data = [{"id": sim.model_id, "object": "model", "created": 0, "owned_by": oc.FINGERPRINT}]
    return JSONResponse({"object": "list", "data": data})


async def arm_fault(request: Request, sim: SimState) -> Response:
    body = await oc.read_object(request)
    kind = body.get("kind")
    count = body.get("count")
    if not isinstance(kind, str) or (count is not None and (not isinstance(count, int) or isinstance(count, bool))):
        raise oc.BadRequest('expected {"kind": "<fault>", "count": <whole number, optional>}')
    try:
        spec = parse_fault(kind if count is None else f"{kind}:{count}")
    except SimConfigError as error:
        raise oc.BadRequest(str(error), param="kind") from None
    sim.faults.arm(spec)
    return JSONResponse(_armed(sim.faults.armed()))


async def clear_faults(request: Request, sim: SimState) -> Response:
    sim.faults.clear()
    return JSONResponse(_armed([]))


async def stats(request: Request, sim: SimState) -> Response:
    snapshot: dict[str, Any] = sim.stats.snapshot()
    snapshot["faults_armed"] = _armed(sim.faults.armed())["armed"]
    snapshot["profile"] = sim.profile.name
    snapshot["truth"] = (
        {"files": sim.truth.file_count, "chars": sim.truth.char_count} if sim.truth is not None else None
    )
    snapshot["edit_truth"] = _edit_truth(sim.edit_truth)
    return JSONResponse(snapshot)


async def reset(request: Request, sim: SimState) -> Response:
    sim.stats.reset()
    sim.reset_edits()
    sim.requests.clear()
    return JSONResponse({"reset": True})


async def requests(request: Request, sim: SimState) -> Response:
    logged = [{"endpoint": r.endpoint, "body": r.body} for r in sim.requests.all()]
    return JSONResponse({"requests": logged})


async def set_edit_truth(request: Request, sim: SimState) -> Response:
    body = await oc.read_object(request)
    files = body.get("files")
    errors = body.get("errors", "calibrated")
    scale = body.get("error_scale", 1.0)
    if not isinstance(files, dict):
        raise oc.BadRequest('expected {"files": {"path": "text after the edit", ...}}', param="files")
    if not isinstance(scale, int | float) or isinstance(scale, bool):
        raise oc.BadRequest("error_scale must be a number >= 0", param="error_scale")
    try:
        truth = EditTruth(files=dict(files), errors=errors, error_scale=float(scale))
    except ValueError as error:
        raise oc.BadRequest(str(error)) from None
    sim.set_edit_truth(truth)
    return JSONResponse(_edit_truth(truth))


async def set_next_edit_truth(request: Request, sim: SimState) -> Response:
    body = await oc.read_object(request)
    files = body.get("files")
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise oc.BadRequest('expected {"files": {"path": "text after the next changes", ...}}', param="files")
    sim.next_edit_truth.set(files)
    return JSONResponse({"simulated": True, "files": sorted(files)})


async def edit_draws(request: Request, sim: SimState) -> Response:
    return JSONResponse({"simulated": True, "edits": sim.edit_draws()})


def _edit_truth(truth: EditTruth) -> dict[str, Any]:
    return {"files": sorted(truth.files), "errors": truth.errors, "error_scale": truth.error_scale}


def _armed(specs: list[FaultSpec]) -> dict[str, Any]:
    return {"armed": [{"kind": s.kind.value, "count": s.count} for s in specs]}
