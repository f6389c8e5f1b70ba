DROP TABLE api_keys;
DROP TABLE orders;
DROP TABLE pets;
