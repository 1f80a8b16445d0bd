# Fake NameServer + broker on loopback: records each frame a client sends, answers the route
# request so the client goes on to the broker.
import socket, struct, threading, json, sys, os
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def serve(sock, name, handler):
    n = 0
    while True:
        conn, _ = sock.accept()
        def run(conn):
            nonlocal n
            buf = b''
            while True:
                d = conn.recv(65536)
                if not d: return
                buf += d
                while len(buf) >= 4:
                    length = struct.unpack('>i', buf[:4])[0]
                    if len(buf) < 4 + length: break
                    frame, buf = buf[:4+length], buf[4+length:]
                    hdr_len = struct.unpack('>i', frame[4:8])[0] & 0xFFFFFF
                    hdr = json.loads(frame[8:8+hdr_len]) if frame[4] == 0 else {}
                    n += 1
                    open(f"{out}/{name}_{n:02d}_code{hdr.get('code')}.bin", 'wb').write(frame)
                    reply = handler(hdr)
                    if reply is not None:
                        h, body = reply
                        h = json.dumps(h).encode()
                        conn.sendall(struct.pack('>ii', 4+len(h)+len(body), len(h)) + h + body)
        threading.Thread(target=run, args=(conn,), daemon=True).start()
ns = socket.socket(); ns.bind(('127.0.0.1', 0)); ns.listen()
br = socket.socket(); br.bind(('127.0.0.1', 0)); br.listen()
bport = br.getsockname()[1]
route = json.dumps({"brokerDatas":[{"brokerAddrs":{"0":f"127.0.0.1:{bport}"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":False}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}, separators=(",", ":")).encode()
def ns_handler(h):
    if h.get('code') == 105:
        return ({"code":0,"flag":1,"language":"JAVA","opaque":h['opaque'],"version":479}, route)
    return None
def br_handler(h):
    if h.get('code') == 34:
        return ({"code":0,"flag":1,"language":"JAVA","opaque":h['opaque'],"version":479}, b'')
    if h.get('code') in (10, 310):
        return ({"code":0,"flag":1,"language":"JAVA","opaque":h['opaque'],"version":479,"extFields":{"msgId":"7F00000100002A9F0000000000000000","queueId":"0","queueOffset":"0"}}, b'')
    return None
threading.Thread(target=serve, args=(br, 'broker', br_handler), daemon=True).start()
print(ns.getsockname()[1], flush=True)
serve(ns, 'namesrv', ns_handler)
