"""A service account's session with the tool-service's typed gRPC API, as
docs/grpc.md walks through it: a token from the auth-service's token
endpoint (client credentials), the services listed with server reflection,
then typed calls built from the reflected schemas (no generated stubs):
ListOrganizations, ListLocations of the first organization, ListOrders of
its first location, and a ListLocations without its required
`organization_id` to show an INVALID_ARGUMENT with its details.

    CHATAIGNE_CLIENT_SECRET=... python grpc_session.py \\
        --token-url http://127.0.0.1:8081/token --client-id reporting \\
        --target 127.0.0.1:50052 [--ca-file ca.pem [--cert c.pem --key k.pem]]

Prints one JSON report on stdout: {"services", "organizations",
"locations", "orders", "invalid_argument": {"code", "message", "reason",
"violations"}}. Exit codes: 0 done, 1 a step failed (the message on
stderr), 64 usage. The secret is read from the environment, never from the
command line; the token is never printed.

Needs grpcio, grpcio-reflection, grpcio-status and protobuf.
"""

import argparse
import base64
import json
import os
import sys
import urllib.parse
import urllib.request

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from google.rpc import error_details_pb2
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from grpc_status import rpc_status

PACKAGE = "chataigne.tools.v1"
# A deadline on every call: the server stops working on a call whose caller
# has given up.
DEADLINE_SECONDS = 10


def client_credentials_token(token_url, client_id, secret):
    """An access token of the service account (RFC 6749 §4.4)."""
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    request = urllib.request.Request(
        token_url,
        data=urllib.parse.urlencode({"grant_type": "client_credentials"}).encode(),
        headers={
            "Authorization": f"Basic {basic}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    with urllib.request.urlopen(request, timeout=DEADLINE_SECONDS) as response:
        return json.load(response)["access_token"]


class TypedApi:
    """Unary calls of the typed RPCs, with request and response classes
    built from the server's reflection."""

    def __init__(self, channel, token):
        self.channel = channel
        self.metadata = (("authorization", f"Bearer {token}"),)
        self.reflection = ProtoReflectionDescriptorDatabase(channel)
        self.pool = descriptor_pool.DescriptorPool(self.reflection)

    def services(self):
        return sorted(self.reflection.get_services())

    def call(self, service, method, **fields):
        """Calls `PACKAGE.service/method` with a request of `fields`; returns
        the response as a dict (proto field names)."""
        descriptor = self.pool.FindMethodByName(f"{PACKAGE}.{service}.{method}")
        request_class = message_factory.GetMessageClass(descriptor.input_type)
        response_class = message_factory.GetMessageClass(descriptor.output_type)
        stub = self.channel.unary_unary(
            f"/{PACKAGE}.{service}/{method}",
            request_serializer=request_class.SerializeToString,
            response_deserializer=response_class.FromString,
        )
        request = json_format.ParseDict(fields, request_class())
        response = stub(request, metadata=self.metadata, timeout=DEADLINE_SECONDS)
        return json_format.MessageToDict(response, preserving_proto_field_name=True)


def error_details(error):
    """The status code, message and rich details (google.rpc.ErrorInfo,
    BadRequest, RetryInfo) of a failed call."""
    report = {"code": error.code().name, "message": error.details()}
    try:
        status = rpc_status.from_call(error)
    except ValueError as mismatch:
        # grpcio-status requires the details' google.rpc.Status to repeat the
        # call's code and message.
        raise RuntimeError(f"the status details disagree with the status: {mismatch}")
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            report["reason"] = info.reason
            report["domain"] = info.domain
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad_request = error_details_pb2.BadRequest()
            detail.Unpack(bad_request)
            report["violations"] = [
                {"field": v.field, "description": v.description}
                for v in bad_request.field_violations
            ]
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            report["retry_after_seconds"] = retry.retry_delay.ToTimedelta().total_seconds()
    return report


def read(path):
    """The bytes of the PEM file at `path`, or None without one."""
    if not path:
        return None
    with open(path, "rb") as pem:
        return pem.read()


def session(args, secret):
    token = client_credentials_token(args.token_url, args.client_id, secret)
    if args.ca_file:
        credentials = grpc.ssl_channel_credentials(
            read(args.ca_file), read(args.key), read(args.cert)
        )
        channel = grpc.secure_channel(args.target, credentials)
    else:
        channel = grpc.insecure_channel(args.target)
    with channel:
        api = TypedApi(channel, token)
        report = {"services": api.services()}

        organizations = api.call("Restaurant", "ListOrganizations", page={"limit": 5})
        report["organizations"] = organizations.get("organizations", [])
        if not report["organizations"]:
            raise RuntimeError("ListOrganizations returned no organization")
        organization_id = report["organizations"][0]["id"]

        locations = api.call("Restaurant", "ListLocations", organization_id=organization_id)
        report["locations"] = locations.get("locations", [])
        if not report["locations"]:
            raise RuntimeError("ListLocations returned no location")

        orders = api.call(
            "Restaurant",
            "ListOrders",
            location_id=report["locations"][0]["id"],
            page={"limit": 3},
        )
        report["orders"] = orders.get("orders", [])

        try:
            api.call("Restaurant", "ListLocations", organization_id="")
            raise RuntimeError("ListLocations without organization_id was answered")
        except grpc.RpcError as error:
            report["invalid_argument"] = error_details(error)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--token-url", required=True, help="the auth-service's /token")
    parser.add_argument("--client-id", required=True, help="the service account")
    parser.add_argument("--target", required=True, help="host:port of the tool-service's gRPC")
    parser.add_argument("--ca-file", help="PEM CA of a TLS listener; plaintext without")
    parser.add_argument("--cert", help="PEM client certificate (mutual TLS)")
    parser.add_argument("--key", help="PEM key of the client certificate")
    parser.add_argument(
        "--secret-env",
        default="CHATAIGNE_CLIENT_SECRET",
        help="environment variable holding the client secret",
    )
    try:
        args = parser.parse_args()
    except SystemExit as exit:
        sys.exit(64 if exit.code else 0)
    secret = os.environ.get(args.secret_env)
    if not secret:
        print(f"grpc_session: set {args.secret_env} to the client secret", file=sys.stderr)
        sys.exit(64)
    try:
        report = session(args, secret)
    except (grpc.RpcError, OSError, RuntimeError, KeyError) as error:
        if isinstance(error, grpc.RpcError):
            error = error_details(error)
        print(f"grpc_session: {error}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
