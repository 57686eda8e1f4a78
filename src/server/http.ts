/**
 * The HTTP layer under Fastify: deadlines for clients that trickle their headers or body (Node
 * checks them every connectionsCheckingInterval, 30 s unless set), keep-alive, and the answers
 * Node gives itself before routing (malformed requests, timeouts, an unknown Expect), all in the
 * JSON error shape.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyServerOptions } from "fastify";
import type { Config } from "../config.js";

type HttpOptions = Pick<FastifyServerOptions, "keepAliveTimeout" | "requestTimeout" | "forceCloseConnections"> & {
  serverFactory: (handler: (request: IncomingMessage, response: ServerResponse) => void) => Server;
  clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => void;
};

export function httpOptions(config: Config): HttpOptions {
  return {
    forceCloseConnections: "idle",
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.bodyTimeoutMs,
    serverFactory: (handler) => {
      const server = createServer(
        {
          connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
          headersTimeout: Math.min(config.headersTimeoutMs, config.bodyTimeoutMs),
          requestTimeout: config.bodyTimeoutMs,
          keepAliveTimeout: config.keepAliveTimeoutMs,
        },
        handler,
      );
      // Node's own 417 has no body.
      server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
        const body = JSON.stringify({ error: `Expect: ${String(request.headers.expect)} is not supported`, code: 417 });
        response.writeHead(417, {
          "content-type": "application/json; charset=utf-8",
          "content-length": Buffer.byteLength(body),
          connection: "close",
        });
        response.end(body);
      });
      return server;
    },
    // Malformed HTTP and timed-out requests never reach routing.
    clientErrorHandler: (error, socket) => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      const [status, reason, message] =
        error.code === "HPE_HEADER_OVERFLOW"
          ? [431, "Request Header Fields Too Large", "request headers are too large"]
          : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
            ? [
                408,
                "Request Timeout",
                `the request was not received in time (headers within ${config.headersTimeoutMs} ms, the whole request within ${config.bodyTimeoutMs} ms)`,
              ]
            : [400, "Bad Request", "malformed HTTP request"];
      const body = JSON.stringify({ error: message, code: status });
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  };
}
