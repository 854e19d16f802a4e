-- EMQ.ACK's twin (after shared.lua). ARGV = token, job [, job ...]
return settle('ack', 'ack')
