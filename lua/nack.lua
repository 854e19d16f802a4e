-- EMQ.NACK's twin (after shared.lua). ARGV = token, job [, job ...]
return settle('nack', 'return')
